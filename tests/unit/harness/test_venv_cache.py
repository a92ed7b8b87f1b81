"""hack/venv.sh: the venv built once per interpreter and requirements in the cache, linked into the
checkout (a fresh clone links it instead of installing the packages again; a venv directory made in
place is replaced by the link), and a new one when a file the requirements read changes."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "hack", "venv.sh")


def run(tmp_path, link, *reqs):
    env = dict(os.environ, CLUSTER_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([SCRIPT, str(link), sys.executable, *map(str, reqs)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=True)


def test_built_once_linked_and_rebuilt_when_the_requirements_change(tmp_path):
    req, inc = tmp_path / "req.txt", tmp_path / "inc.txt"
    req.write_text("-r inc.txt\n")
    inc.write_text("# nothing to install\n")
    (tmp_path / "clone1").mkdir()
    first = run(tmp_path, tmp_path / "clone1" / ".venv", req, inc)
    assert "creating" in first.stdout, first.stdout
    built = os.readlink(tmp_path / "clone1" / ".venv")
    assert os.path.dirname(built) == str(tmp_path / "cache" / "venvs")
    assert os.path.basename(built).startswith("venv-"), built
    assert os.path.exists(os.path.join(built, ".complete"))
    assert os.access(os.path.join(built, "bin", "python"), os.X_OK)
    with open(os.path.join(built, ".built-from")) as fh:
        assert fh.read() == "req.txt\n"

    in_place = tmp_path / "clone2" / ".venv"     # a venv made in place before hack/venv.sh
    (in_place / "bin").mkdir(parents=True)
    second = run(tmp_path, in_place, req, inc)
    assert "creating" not in second.stdout, second.stdout
    assert os.path.islink(in_place) and os.readlink(in_place) == built

    inc.write_text("# nothing to install, but changed\n")   # a file the requirements read (-r)
    third = run(tmp_path, in_place, req, inc)
    assert "creating" in third.stdout, third.stdout
    assert os.readlink(in_place) not in (built, None)
    assert os.readlink(tmp_path / "clone1" / ".venv") == built and os.path.isdir(built)
