# The trainer's sources, named once: src/train/CMakeLists.txt builds them
# here, and the trainer kit of a GPU bundle (bench/gpu/trainer) builds them
# on a machine that has PyTorch but none of this project's -dev packages.
set(SLUICE_TRAIN_LIBRARY_SOURCES
  models.cc optim.cc scaler.cc distributed.cc checkpoint.cc checkpoint_meta.cc support.cc trainer.cc
  extract.cc npy.cc)
set(SLUICE_TRAIN_MAIN_SOURCES main.cc)
