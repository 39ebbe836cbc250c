from geometry import Point, distance

origin = Point(0, 0)
print(distance(origin, Point(3, 4)))
