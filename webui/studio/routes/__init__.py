"""The studio's routes, one module per area: environments, play, episodes."""
