#!/usr/bin/env bash
# DeepSpeed importable for the suites' steps: when $PYTHON cannot import it, install the wheels
# carried in .whl/ (DeepSpeed built with DS_BUILD_OPS=0, pydantic, pydantic-core, annotated-types,
# typing-inspection, hjson) into /tmp/site, which scripts/gpu-suite.sh puts on every step's
# PYTHONPATH. Prints the versions found.
set -u
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import deepspeed' >/dev/null 2>&1; then
	ls .whl/*.whl >/dev/null 2>&1 || { echo "ds-install: $PYTHON cannot import deepspeed and .whl/ has no wheels"; exit 1; }
	"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl ||
		{ echo "ds-install: pip install of .whl/*.whl failed"; exit 1; }
	case ":${PYTHONPATH:-}:" in *:/tmp/site:*) ;; *) export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} ;; esac
fi
"$PYTHON" -c 'import torch, deepspeed; print("torch", torch.__version__, "deepspeed", deepspeed.__version__)'
