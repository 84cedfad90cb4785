#!/usr/bin/env bash
# Import + CLI smoke tests for one installed interpreter: .ci/smoke.sh VENV_DIR
# (run on every declared Python version other than the default, on a fresh virtual environment).
set -euo pipefail
venv="$1"
py="$venv/bin/python"
cli="$venv/bin/cmdp-rl"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$py" -c "import cmdp_rl, sys; print('import ok', cmdp_rl.__version__, sys.version.split()[0])"
"$cli" --version
"$py" -m cmdp_rl --help > /dev/null
"$cli" solve "$root/examples/two_state.npz" --json | grep -q '"optimal"'
"$cli" solve 1a --json | grep -q '"optimal"'
"$cli" bounds --states 9 --actions 4 --horizon 10 --constraints 1 --eps 0.1 --delta 0.1 > /dev/null
"$cli" learn "$root/examples/two_state.npz" --algo online-crl --episodes 20 --json | grep -q '"episodes": 20'
"$cli" learn "$root/examples/two_state.npz" --algo gmbl --samples-per-pair 20 --json | grep -q '"samples_per_pair": 20'
cat > tiny.toml <<'TOML'
preset = "quick"
scenarios = ["2"]
runs = 1
gmbl_n_max = 40
[episodes]
2 = 20
TOML
"$cli" reproduce --config tiny.toml --out out --no-progress --jobs 1 > /dev/null
test -s out/results.csv
set +e
"$cli" learn 1a --algo online-crl --episodes 5 --seed -1 2> err.txt
code=$?
set -e
test "$code" -eq 2 && test "$(wc -l < err.txt)" -eq 1
echo "smoke ok"
