// header
import x from 'y'
const x = 1
let a = 0
let b = 0

let c = 0
let d = 0
const y = 2
