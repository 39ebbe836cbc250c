fn main() {
	let s = "こんにちは 🌍";
	println!("{}", s); // 日本語
}
