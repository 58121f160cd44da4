"""bench/sass_diff.py (CPU only): the instruction stream it compares, and one build of this tree against itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import sass_diff  # noqa: E402

SASS = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                         /* 0x00000a00ff017b82 */
                                                                                  /* 0x000fe20000000800 */
        /*0010*/                   FFMA R20, R43, R3, R20 ;                       /* 0x000000032b147223 */
                                                                                  /* 0x000fc80000000014 */
        /*0020*/              @!P1 BRA 0x7f754f7fb0d0 ;                           /* 0x0000000000009947 */
                                                                                  /* 0x000fea0003800000 */
"""


def test_instructions_drop_addresses_encodings_and_control() -> None:
    assert sass_diff.instructions(SASS) == ["LDC R1, c[0x0][0x28]", "FFMA R20, R43, R3, R20", "@!P1 BRA 0x7f754f7fb0d0"]
    # a control-bit change (the second encoding word) leaves the stream equal
    assert sass_diff.instructions(SASS.replace("0x000fe20000000800", "0x001fc40000000800")) == \
        sass_diff.instructions(SASS)


def _has_history() -> bool:
    return shutil.which("git") is not None and subprocess.run(
        ["git", "-C", str(sass_diff.ROOT), "rev-parse", "--verify", "HEAD"], capture_output=True, check=False
    ).returncode == 0


@pytest.mark.skipif(not _has_history(), reason="needs the repository's git history (git archive HEAD)")
def test_this_tree_against_its_head(capsys) -> None:
    # HEAD's package against this tree's: the same SASS where the package has no uncommitted edits (a clean clone,
    # as in CI); with edits only the report's form is checked
    clean = subprocess.run(["git", "-C", str(sass_diff.ROOT), "diff", "--quiet", "HEAD", "--", "gemmgen"],
                           check=False).returncode == 0
    rc = sass_diff.main(["--before", "HEAD", "--spec", "--shape 129x136x1280"])
    out = capsys.readouterr().out
    assert out.startswith(("same", "DIFF")) and "sm90_e4m3_bf16_nt_n136k1280" in out, out
    if clean:
        assert rc == 0 and out.startswith("same  "), out
    else:
        assert rc == (0 if out.startswith("same") else 1)


def test_a_build_failure_is_reported_and_fails(capsys) -> None:
    if not _has_history():
        pytest.skip("needs the repository's git history (git archive HEAD)")
    rc = sass_diff.main(["--before", "HEAD", "--spec", "--shape 7x24x16 --config block_n=7"])
    out = capsys.readouterr().out
    assert rc == 1 and out.startswith("FAIL") and "block_n=7" in out, out


def test_a_bad_revision_names_the_argument() -> None:
    if not _has_history():
        pytest.skip("needs the repository's git history (git archive)")
    with pytest.raises(SystemExit, match="--before 'no-such-revision'"):
        sass_diff.main(["--before", "no-such-revision"])
