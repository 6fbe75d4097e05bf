#!/usr/bin/env bash
# Uses a listed program, one of an unlisted package, and one nothing brings.
command -v bash
command -v cmake
command -v troupe-no-such-program
