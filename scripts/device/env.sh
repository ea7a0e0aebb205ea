# Sourced by the scripts/device/*.sh runners on the device machine: $OUT for
# logs, the CUDA 13.0 libraries and the host libraries carried in
# .devbin/gpu/lib (OpenBLAS and its dependencies) on LD_LIBRARY_PATH, and the
# device's name and clocks in $OUT/device.txt.
OUT=${OUT:-/tmp/asynctp-device-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
# NCCL: the binaries were built against NCCL 2.28.9's headers (its device API
# reads NCCL's window structures), so load the 2.28.9 that PyTorch ships
# rather than the system's older libnccl.so.2.
for nccl_dir in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib; do
  [ -e "$nccl_dir/libnccl.so.2" ] && export LD_LIBRARY_PATH=$nccl_dir:$LD_LIBRARY_PATH
done
# No NVLink multicast on these machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d .devbin/gpu/lib ]; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.devbin/gpu/lib
fi
nvidia-smi -L 2>&1 | tee "$OUT/device.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$OUT/device.txt" 2>&1
