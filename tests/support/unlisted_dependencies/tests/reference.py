"""A module no package brings."""
import json
import troupe_no_such_module
