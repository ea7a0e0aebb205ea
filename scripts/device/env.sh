# Sourced by the scripts/device/*.sh runners on the device machine: $OUT for
# logs, the CUDA 13.0 libraries and the host libraries carried in
# .devbin/gpu/lib (OpenBLAS and its dependencies) on LD_LIBRARY_PATH, and the
# device's name and clocks in $OUT/device.txt.
OUT=${OUT:-/tmp/asynctp-device-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if [ -d .devbin/gpu/lib ]; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.devbin/gpu/lib
fi
nvidia-smi -L 2>&1 | tee "$OUT/device.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$OUT/device.txt" 2>&1
