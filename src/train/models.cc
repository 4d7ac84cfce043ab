#include "train/models.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>

#include <functional>

namespace sluice::training {
namespace {

namespace nn = torch::nn;

torch::Tensor flatten_pooled(const torch::Tensor& x) {
  return x.dim() == 4 ? x.mean({2, 3}) : x.flatten(1);
}

// Conv 3x3 64 + ReLU, max-pool 2, flatten, dense 1024 + ReLU, dense classes
// (float32). What the original team started from.
class SeedCnn final : public ClassifierImpl {
 public:
  SeedCnn(int classes, int size)
      : conv_(register_module("conv", nn::Conv2d(nn::Conv2dOptions(3, 64, 3).padding(1)))),
        fc1_(register_module("fc1", nn::Linear(64 * (size / 2) * (size / 2), 1024))),
        fc2_(register_module("fc2", nn::Linear(1024, classes))) {}

  torch::Tensor forward(torch::Tensor x) override {
    x = hidden(x);
    return without_autocast([&] { return fc2_(x.to(torch::kFloat)); });
  }

  torch::Tensor features(torch::Tensor x, const std::string& name) override {
    if (name == "conv") return flatten_pooled(torch::relu(conv_(x)));
    if (name.empty() || name == "fc1") return hidden(x);
    return forward(x);  // "fc2", checked by the caller
  }

  std::vector<std::string> layer_names() const override { return {"conv", "fc1", "fc2"}; }

 private:
  torch::Tensor hidden(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv_(x)), 2);
    return torch::relu(fc1_(x.flatten(1)));
  }

  nn::Conv2d conv_;
  nn::Linear fc1_, fc2_;
};

nn::Conv2d conv(int in, int out, int k, int stride, int pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// torchvision's BasicBlock (ResNet-18/34) and Bottleneck (ResNet-50+, the
// stride on the 3x3 convolution: "ResNet v1.5").
class Block final : public nn::Module {
 public:
  Block(bool bottleneck, int in, int width, int stride) : bottleneck_(bottleneck) {
    int out = bottleneck ? width * 4 : width;
    if (bottleneck) {
      conv1_ = register_module("conv1", conv(in, width, 1, 1, 0));
      bn1_ = register_module("bn1", nn::BatchNorm2d(width));
      conv2_ = register_module("conv2", conv(width, width, 3, stride, 1));
      bn2_ = register_module("bn2", nn::BatchNorm2d(width));
      conv3_ = register_module("conv3", conv(width, out, 1, 1, 0));
      bn3_ = register_module("bn3", nn::BatchNorm2d(out));
    } else {
      conv1_ = register_module("conv1", conv(in, width, 3, stride, 1));
      bn1_ = register_module("bn1", nn::BatchNorm2d(width));
      conv2_ = register_module("conv2", conv(width, width, 3, 1, 1));
      bn2_ = register_module("bn2", nn::BatchNorm2d(width));
    }
    if (stride != 1 || in != out) {
      downsample_ = register_module(
          "downsample", nn::Sequential(conv(in, out, 1, stride, 0), nn::BatchNorm2d(out)));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    if (bottleneck_) y = bn3_(conv3_(torch::relu(y)));
    return torch::relu(y + identity);
  }

 private:
  bool bottleneck_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  nn::Sequential downsample_{nullptr};
};

class ResNet final : public ClassifierImpl {
 public:
  ResNet(bool bottleneck, std::vector<int> blocks, int classes) {
    conv1_ = register_module("conv1", conv(3, 64, 7, 2, 3));
    bn1_ = register_module("bn1", nn::BatchNorm2d(64));
    int in = 64;
    const int widths[] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      nn::Sequential seq;
      for (int b = 0; b < blocks[stage]; ++b) {
        int stride = (stage > 0 && b == 0) ? 2 : 1;
        auto block = std::make_shared<Block>(bottleneck, in, widths[stage], stride);
        seq->push_back(block);
        in = bottleneck ? widths[stage] * 4 : widths[stage];
      }
      layers_.push_back(register_module("layer" + std::to_string(stage + 1), seq));
    }
    fc_ = register_module("fc", nn::Linear(in, classes));
    // torchvision's initialisation: He (fan out) for convolutions, BN at 1/0.
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = features(x, "");
    return without_autocast([&] { return fc_(x.to(torch::kFloat)); });
  }

  torch::Tensor features(torch::Tensor x, const std::string& name) override {
    x = torch::max_pool2d(torch::relu(bn1_(conv1_(x))), 3, 2, 1);
    if (name == "stem") return flatten_pooled(x);
    for (size_t i = 0; i < layers_.size(); ++i) {
      x = layers_[i]->forward(x);
      if (name == "layer" + std::to_string(i + 1)) return flatten_pooled(x);
    }
    x = x.mean({2, 3});  // adaptive average pool to 1x1, flattened
    if (name.empty() || name == "avgpool") return x;
    return without_autocast([&] { return fc_(x.to(torch::kFloat)); });
  }

  std::vector<std::string> layer_names() const override {
    return {"stem", "layer1", "layer2", "layer3", "layer4", "avgpool", "fc"};
  }

 private:
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> layers_;
  nn::Linear fc_{nullptr};
};

}  // namespace

torch::Tensor without_autocast(const std::function<torch::Tensor()>& fn) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return fn();
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"seed-cnn", "resnet18", "resnet50"};
  return names;
}

Result<std::shared_ptr<ClassifierImpl>> make_model(const std::string& name, int classes,
                                                   int image_size) {
  if (classes < 1) return invalid_argument_error("the dataset has no classes");
  if (name == "seed-cnn") {
    if (image_size < 2) return invalid_argument_error("seed-cnn needs images of at least 2x2");
    // Its dense layer grows with the square of the image side: 822M
    // weights at 224x224. Refuse what would not fit a GPU's memory.
    const double dense = 64.0 * (image_size / 2) * (image_size / 2) * 1024;
    if (dense > 2.7e8) {
      return invalid_argument_error(fmt::format(
          "seed-cnn at {0}x{0} would have a dense layer of {1:.0f}M weights; use --size 128 or "
          "less, or resnet18/resnet50",
          image_size, dense / 1e6));
    }
    return std::shared_ptr<ClassifierImpl>(std::make_shared<SeedCnn>(classes, image_size));
  }
  if (name == "resnet18") {
    return std::shared_ptr<ClassifierImpl>(
        std::make_shared<ResNet>(false, std::vector<int>{2, 2, 2, 2}, classes));
  }
  if (name == "resnet50") {
    return std::shared_ptr<ClassifierImpl>(
        std::make_shared<ResNet>(true, std::vector<int>{3, 4, 6, 3}, classes));
  }
  return invalid_argument_error("unknown model '" + name +
                                "' (expected seed-cnn, resnet18 or resnet50)");
}

}  // namespace sluice::training
