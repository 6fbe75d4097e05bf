#pragma once
// A public header of the fixture that includes CAF.
#include <caf/all.hpp>
