#include "runtime/tools/tool_registry.hpp"

#include "runtime/tools/detail/schema_hazard.hpp"

#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

namespace troupe {

std::chrono::milliseconds retry_policy::backoff_before(int attempt) const {
  const double factor = std::pow(multiplier, std::max(0, attempt - 2));
  const auto ms = static_cast<std::int64_t>(static_cast<double>(initial_backoff.count()) * factor);
  return std::min(std::chrono::milliseconds(ms), max_backoff);
}

namespace {

// A number a C++ program puts in a schema or in arguments as std::size_t is
// a uint64 in Boost.JSON, which valijson's adapter reads as no integer at
// all ("maxLength must be a non-negative integer"); JSON text never parses
// to one below 2^63. Those are made int64, as text would have made them.
void signed_integers(boost::json::value& v) {
  std::vector<boost::json::value*> todo{&v};
  while (!todo.empty()) {
    boost::json::value* x = todo.back();
    todo.pop_back();
    if (x->is_uint64()) {
      if (x->get_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        *x = static_cast<std::int64_t>(x->get_uint64());
    } else if (x->is_object()) {
      for (auto& kv : x->get_object()) todo.push_back(&kv.value());
    } else if (x->is_array()) {
      for (auto& item : x->get_array()) todo.push_back(&item);
    }
  }
}

}  // namespace

struct registered_tool::compiled_schema {
  valijson::Schema schema;
};

registered_tool::registered_tool(tool t) : tool_(std::move(t)), schema_(std::make_unique<compiled_schema>()) {
  const auto unusable = [&](const std::string& why) {
    return std::invalid_argument("tool \"" + tool_.spec.name +
                                 "\": its parameters are not a usable JSON Schema: " + why);
  };
  // Checked before anything copies the schema: valijson, and Boost.JSON's
  // copy, would overflow the stack on some of what it refuses.
  if (auto why = schema_hazard(tool_.spec.parameters)) throw unusable(*why);
  try {
    boost::json::value schema_doc(tool_.spec.parameters);
    signed_integers(schema_doc);
    valijson::adapters::BoostJsonAdapter adapter(schema_doc);
    valijson::SchemaParser().populateSchema(adapter, schema_->schema);
  } catch (const std::exception& e) {
    throw unusable(e.what());
  }
}

registered_tool::~registered_tool() = default;

std::optional<error_info> registered_tool::validate(const boost::json::object& arguments) const {
  boost::json::value target(arguments);
  signed_integers(target);
  valijson::adapters::BoostJsonAdapter adapter(target);
  valijson::ValidationResults results;
  if (valijson::Validator().validate(schema_->schema, adapter, &results)) return std::nullopt;

  // valijson reports each failing level, outermost first; the deepest one
  // says most. Its context reads "<root>[b][0]"; models read "/b/0" better.
  std::string message = "the arguments do not match the tool's schema";
  valijson::ValidationResults::Error error;
  std::size_t deepest = 0;
  std::string detail;
  while (results.popError(error)) {
    if (!detail.empty() && error.context.size() < deepest) continue;
    deepest = error.context.size();
    std::string where;
    for (const auto& part : error.context) {
      if (part == "<root>") continue;
      where += "/" + (part.size() >= 2 && part.front() == '[' ? part.substr(1, part.size() - 2) : part);
    }
    detail = (where.empty() ? "/" : where) + ": " + error.description;
  }
  if (!detail.empty()) message += " (" + detail + ")";
  return error_info::of(error_type::invalid_arguments, message);
}

namespace {

// What a tool threw, as the typed error the model reads.
template <class Body>
auto typed_failures(const tool_context& ctx, Body&& body, const auto& on_error) {
  try {
    return body();
  } catch (const tool_failure& f) {
    return on_error(error_info::of(f.type, f.what(), ctx.attempt), f.retryable);
  } catch (const std::exception& e) {
    return on_error(error_info::of(error_type::tool_failed, e.what(), ctx.attempt), false);
  } catch (...) {
    return on_error(error_info::of(error_type::tool_failed, "the tool failed with an unknown exception", ctx.attempt),
                    false);
  }
}

}  // namespace

tool_attempt registered_tool::run_once(const boost::json::object& arguments, const tool_context& ctx) const {
  if (auto invalid = validate(arguments)) return {*invalid, false};
  return typed_failures(
      ctx,
      [&] {
        return tool_attempt{tool_.run(arguments, ctx), false};
      },
      [](error_info e, bool retryable) {
        return tool_attempt{std::move(e), retryable};
      });
}

std::function<void()> registered_tool::start_once(const boost::json::object& arguments, const tool_context& ctx,
                                                  tool_finish finish) const {
  if (auto invalid = validate(arguments)) {
    finish(std::move(*invalid));
    return {};
  }
  return typed_failures(
      ctx, [&] { return tool_.start(arguments, ctx, finish); },
      [&](error_info e, bool) {
        finish(std::move(e));
        return std::function<void()>{};
      });
}

tool_registry::tool_registry() = default;
tool_registry::~tool_registry() = default;

void tool_registry::add(tool t) {
  if (t.spec.name.empty()) throw std::invalid_argument("a tool needs a name");
  if (!t.run == !t.start)
    throw std::invalid_argument("tool \"" + t.spec.name + "\" needs either a function or an asynchronous start");
  auto compiled = std::make_shared<const registered_tool>(std::move(t));
  std::unique_lock lock(mutex_);
  tools_[compiled->definition().spec.name] = std::move(compiled);
}

bool tool_registry::remove(std::string_view name) {
  std::unique_lock lock(mutex_);
  return tools_.erase(std::string(name)) > 0;
}

std::shared_ptr<const registered_tool> tool_registry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = tools_.find(std::string(name));
  return it == tools_.end() ? nullptr : it->second;
}

std::vector<std::string> tool_registry::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, _] : tools_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

tool_set tool_registry::specs(const std::vector<std::string>& names) const {
  std::vector<tool_spec> out;
  std::string unknown;
  std::shared_lock lock(mutex_);
  for (const auto& n : names) {
    auto it = tools_.find(n);
    if (it == tools_.end())
      unknown += (unknown.empty() ? "" : ", ") + n;
    else
      out.push_back(it->second->definition().spec);
  }
  if (!unknown.empty()) throw std::invalid_argument("unknown tools: " + unknown);
  return make_tool_set(std::move(out));
}

}  // namespace troupe
