# The nvJPEG decode tiers (src/device/jpeg_tiers.h), tested without a GPU:
# fake_cuda is the runtime (device memory is host memory) and a fake nvJPEG
# decodes with libjpeg-turbo. Two builds of the fake: the current API, and
# one without ROI decoding (an older library), where whole images are
# decoded and the crop is reported inside them.
# A third, cuda12, reports major version 12 (an nvJPEG for another CUDA
# runtime), for the library search.
foreach(variant full noroi cuda12)
  add_library(fake_nvjpeg_${variant} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvjpeg.cc)
  target_link_libraries(fake_nvjpeg_${variant} PRIVATE sluice::image libjpeg-turbo::jpeg fake_cuda)
  sluice_target_warnings(fake_nvjpeg_${variant})
endforeach()
target_compile_definitions(fake_nvjpeg_noroi PRIVATE FAKE_NVJPEG_NO_ROI)
target_compile_definitions(fake_nvjpeg_cuda12 PRIVATE FAKE_NVJPEG_DEFAULT_MAJOR=12)

sluice_test(device_jpeg_tiers_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/jpeg_tiers_test.cc
  DEPS sluice::device sluice::image ${CMAKE_DL_LIBS})
sluice_fake_path(fake_cuda_path fake_cuda)
sluice_fake_path(fake_nvjpeg_path fake_nvjpeg_full)
sluice_fake_path(fake_nvjpeg_noroi_path fake_nvjpeg_noroi)
sluice_fake_path(fake_nvjpeg_cuda12_path fake_nvjpeg_cuda12)
target_compile_definitions(device_jpeg_tiers_test PRIVATE
  SLUICE_FAKE_CUDA="${fake_cuda_path}"
  SLUICE_FAKE_NVJPEG="${fake_nvjpeg_path}"
  SLUICE_FAKE_NVJPEG_NOROI="${fake_nvjpeg_noroi_path}"
  SLUICE_FAKE_NVJPEG_CUDA12="${fake_nvjpeg_cuda12_path}")
add_dependencies(device_jpeg_tiers_test fake_cuda fake_nvjpeg_full fake_nvjpeg_noroi
  fake_nvjpeg_cuda12)
