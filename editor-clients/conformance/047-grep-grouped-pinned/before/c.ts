let z = 4
