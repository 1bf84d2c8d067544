"""Jobs that are not asset jobs: each task file becomes one (see `tasks`)."""
