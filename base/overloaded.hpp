#pragma once
// Builds one visitor from several lambdas, for std::visit over our variants.

namespace troupe {

template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};

// C++20 deduces this for aggregates, but clang 14 does not implement that yet.
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

}  // namespace troupe
