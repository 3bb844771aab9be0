"""The ``openenv`` command line."""
