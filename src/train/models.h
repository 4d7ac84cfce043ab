// The models `sluice train` knows, as LibTorch modules: the seed CNN users
// start from, and ResNet-18/50 with torchvision's architecture and parameter
// names (conv1.weight, layer1.0.bn1.running_mean, fc.bias, ...).
#pragma once

#include <torch/nn.h>

#include <memory>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice::training {

// A classifier with named feature layers for extraction.
class ClassifierImpl : public torch::nn::Module {
 public:
  // Logits, float32 whatever autocast does inside.
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // One vector per image from layer `name` (feature maps are averaged over
  // their spatial positions); "" means the penultimate layer.
  virtual torch::Tensor features(torch::Tensor x, const std::string& name) = 0;
  // The names features() accepts, input to output.
  virtual std::vector<std::string> layer_names() const = 0;
};

// "seed-cnn" | "resnet18" | "resnet50"; kInvalidArgument otherwise.
Result<std::shared_ptr<ClassifierImpl>> make_model(const std::string& name, int classes,
                                                   int image_size);

const std::vector<std::string>& model_names();

// Runs `fn` with autocast off: the output layer and the loss stay float32.
torch::Tensor without_autocast(const std::function<torch::Tensor()>& fn);

}  // namespace sluice::training
