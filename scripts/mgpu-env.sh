# Sourced by the 2-GPU visit scripts (visit-mgpu*.sh): NVLink multicast off (the device tool's
# KINDS.md says why), and mgpu_env LOG, which notes the GPUs and cores in LOG and puts NCCL's
# library (the image's Python package nvidia-nccl, else the first libnccl.so.2 on the disk) on
# LD_LIBRARY_PATH, where zbench's dlopen finds it. Uses $PYTHON (python3).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

mgpu_env() {
	local log=$1 dir
	nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee -a "$log"
	echo "cores: $(nproc); $(lscpu | grep -E 'Model name|Thread\(s\) per core' | tr -s ' ' | tr '\n' ';')" |
		tee -a "$log"
	dir=$("${PYTHON:-python3}" -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' \
		2>/dev/null)
	if [ -z "$dir" ] || [ ! -e "$dir/libnccl.so.2" ]; then
		dir=$(dirname "$(find / -name libnccl.so.2 -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null)
	fi
	echo "NCCL: $dir" | tee -a "$log"
	export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
