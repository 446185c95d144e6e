# Sourced by check.sh and check_short.sh on the GPU machine: install the carried wheels, unpack
# the trimmed Ray, and put looprl's sources and Ray on the path.
python3 -m pip install --quiet --no-index --no-deps --force-reinstall .gpu/wheels/*.whl 2>&1 | tail -2
mkdir -p /tmp/site && tar xJf .gpu/ray.tar.xz -C /tmp/site
export PYTHONPATH=$PWD/src:/tmp/site PYTHONDONTWRITEBYTECODE=1 RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
