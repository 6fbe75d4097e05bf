#pragma once
// A public header of the fixture that reaches a private one: the header check
// must fail on this tree.
#include "lib/detail/hidden.hpp"
