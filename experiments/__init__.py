"""jaxcontam's experiments: each folder a study, run from the repository root as
`python -m experiments.<folder>.<script>`, reading its results through the library. Not shipped with the package
(pyproject.toml lists jaxcontam's packages only)."""
