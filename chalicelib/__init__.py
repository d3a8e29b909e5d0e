"""The approval-workflow engine, its models and its storage adapters."""
