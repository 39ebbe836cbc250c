hello from a
