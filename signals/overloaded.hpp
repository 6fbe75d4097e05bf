#pragma once
// Builds one visitor from several lambdas, for std::visit over our variants.

namespace troupe {

template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};

}  // namespace troupe
