"""Running environments in isolation: runtime providers (``runtime``) and image builds (``images``)."""
