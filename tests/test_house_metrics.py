"""experiments/house/metrics.py counts what issue 60 measures, on a tree whose answers are known."""

from experiments.house import metrics


def test_the_measures_of_a_known_tree(tmp_path):
    package, experiments = tmp_path / "jaxcontam", tmp_path / "experiments"
    package.mkdir()
    experiments.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (package / "long.py").write_text(f"def long():\n{body}\n\n\ndef short(alpha=0.05):\n    return alpha\n")
    (package / "config.py").write_text("class AuditConfig:\n    a: int\n    b: int\n\n\nclass Other:\n    c: int\n")
    (package / "alphabet.py").write_text("ALPHABET = 'alphanumeric'\n")  # a longer word is not `alpha`
    (experiments / "script.py").write_text("import sys\nsys.path.insert(0, '.')\nsys.path.append('..')\n")
    found = metrics.measure(tmp_path)
    assert found["functions_over_60_lines"] == [{"function": "jaxcontam/long.py:long", "lines": 61}]
    assert found["files_naming_alpha"] == ["jaxcontam/long.py"]
    assert found["largest_config_classes"] == [("jaxcontam/config.py:AuditConfig", 2)]
    assert found["sys_path_edits_in_experiments"] == 2
