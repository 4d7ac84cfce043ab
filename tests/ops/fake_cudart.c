/* A stand-in for libcudart: runtime 13.0 on a driver that supports 12.4,
   the mismatch doctor must report as a failure. */
int cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return 0;
}
int cudaDriverGetVersion(int* v) {
  *v = 12040;
  return 0;
}
