/* A stand-in for libnvjpeg.so.13, built by the tests: reports version
   13.0.2, so doctor's nvJPEG checks run on machines without CUDA. */
int nvjpegGetProperty(int type, int* value) {
  switch (type) {
    case 0: *value = 13; return 0;
    case 1: *value = 0; return 0;
    case 2: *value = 2; return 0;
  }
  return 2; /* NVJPEG_STATUS_INVALID_PARAMETER */
}
