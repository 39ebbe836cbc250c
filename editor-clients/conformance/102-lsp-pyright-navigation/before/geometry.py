class Point:
    """A point in the plane."""

    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y


def distance(a: Point, b: Point) -> float:
    """Euclidean distance between two points."""
    return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5
