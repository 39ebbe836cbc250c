fn main() {
	let s = "héllo wörld";
	println!("{}", s); // 日本語
}
