"""The capacity planner's README table from published model configs."""
