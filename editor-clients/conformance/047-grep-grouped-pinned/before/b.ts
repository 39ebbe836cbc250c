const z = 3
