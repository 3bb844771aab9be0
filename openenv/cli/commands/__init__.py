"""Commands kept at 0.10's module paths (``openenv.cli.commands.<name>``): those that talk to the
Hugging Face Hub hold its client names (``HfApi``, ``whoami``, ``login``) here, as 0.10's do."""
