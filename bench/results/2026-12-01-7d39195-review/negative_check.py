# The graph-order test with the fix disabled (Workspace.before_launch a no-op): it must fail.
import sys, os
sys.path.insert(0, "tests")
os.environ.setdefault("GEMMGEN_CACHE_DIR", "/tmp/gemmgen-cache")
from gemmgen.runtime import workspace
workspace.Workspace.before_launch = lambda self: None
import test_gpu_split_global as t
try:
    t.test_graphs_sharing_a_pool_replay_in_any_order()
    print("NEGATIVE CHECK: test passed without the fix (cannot fail)")
except AssertionError as exc:
    print("NEGATIVE CHECK: test failed without the fix, as it must:", str(exc).splitlines()[0][:120])
