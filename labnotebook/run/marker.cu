// The profile pass's marker: launched before each kernel or baseline it profiles, so that
// Nsight Compute's list of kernels, in launch order, can be cut into each one's launches.
extern "C" __global__ void labnotebook_profile_marker(int index) {}
