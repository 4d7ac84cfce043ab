# The nvJPEG decode tiers (src/device/jpeg_tiers.h), tested without a GPU:
# fake_cuda is the runtime (device memory is host memory) and a fake nvJPEG
# decodes with libjpeg-turbo. Two builds of the fake: the current API, and
# one without ROI decoding (an older library), where whole images are
# decoded and the crop is reported inside them.
foreach(variant full noroi)
  add_library(fake_nvjpeg_${variant} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvjpeg.cc)
  target_link_libraries(fake_nvjpeg_${variant} PRIVATE sluice::image fake_cuda)
  sluice_target_warnings(fake_nvjpeg_${variant})
endforeach()
target_compile_definitions(fake_nvjpeg_noroi PRIVATE FAKE_NVJPEG_NO_ROI)

sluice_test(device_jpeg_tiers_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/jpeg_tiers_test.cc
  DEPS sluice::device sluice::image ${CMAKE_DL_LIBS})
target_compile_definitions(device_jpeg_tiers_test PRIVATE
  SLUICE_FAKE_CUDA="$<TARGET_FILE:fake_cuda>"
  SLUICE_FAKE_NVJPEG="$<TARGET_FILE:fake_nvjpeg_full>"
  SLUICE_FAKE_NVJPEG_NOROI="$<TARGET_FILE:fake_nvjpeg_noroi>")
add_dependencies(device_jpeg_tiers_test fake_cuda fake_nvjpeg_full fake_nvjpeg_noroi)
