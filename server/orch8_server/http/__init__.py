"""HTTP layer: routing and the request pipeline. Knows nothing of SQL."""
