hello from b
