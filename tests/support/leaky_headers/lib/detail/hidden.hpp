#pragma once
// A private header of the leaky_headers fixture.
