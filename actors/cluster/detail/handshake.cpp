#include "actors/cluster/detail/handshake.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace troupe::handshake {

namespace {

std::string hex(const unsigned char* data, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

std::string proof(std::string_view secret, std::string_view role, const transcript& t) {
  // No field holds a newline (node ids and nonces are checked or made
  // here), so no two transcripts give the same message.
  std::string message;
  message.append(role)
      .append("\n")
      .append(t.caller_node)
      .append("\n")
      .append(t.gateway_node)
      .append("\n")
      .append(t.caller_nonce)
      .append("\n")
      .append(t.gateway_nonce);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length))
    throw std::runtime_error("HMAC-SHA256 failed");
  return hex(mac, length);
}

}  // namespace

std::string nonce() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes for a nonce");
  return hex(bytes, sizeof bytes);
}

bool is_nonce(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string gateway_proof(std::string_view secret, const transcript& t) { return proof(secret, "troupe gateway", t); }

std::string caller_proof(std::string_view secret, const transcript& t) { return proof(secret, "troupe caller", t); }

std::string session_token(std::string_view secret, const transcript& t) { return proof(secret, "troupe session", t); }

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace troupe::handshake
