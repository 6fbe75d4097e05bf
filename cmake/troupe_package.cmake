# Debian packages, built by CPack from the install rules (cmake/troupe_install.cmake):
#
#   cpack --config build/CPackConfig.cmake -B build/package
#
# troupe_<version>_<arch>.deb      the `troupe` command and the examples; its
#                                  Depends are the shared libraries it loads,
#                                  as dpkg-shlibdeps finds them
# troupe-dev_<version>_<arch>.deb  headers, static libraries, CMake package and
#                                  troupe.pc; it depends on the -dev packages
#                                  the headers include and the libraries link
set(CPACK_PACKAGE_NAME troupe)
set(CPACK_PACKAGE_VENDOR "troupe")
set(CPACK_PACKAGE_CONTACT "troupe maintainers <troupe@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Actor-model LLM agent runtime")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Installed binaries and archives lose their debug sections (archives keep
# their symbols: see the strip rule in troupe_install.cmake).
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME troupe)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CLI_DESCRIPTION "The troupe command runs LLM agents from the command line (ask, chat,
simulate, scenario) or behind an HTTP server (serve). Examples in
/usr/share/troupe/examples.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME troupe-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "Headers, static libraries, CMake package and pkg-config file for programs
that embed troupe: find_package(troupe CONFIG) and the target troupe::troupe,
or pkg-config troupe.")
# The installed headers include Boost.JSON, CAF and toml++; the static
# libraries link CAF (core, io, openssl), Boost.JSON, libcurl, libcrypto, SQLite and libpq.
string(CONCAT CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
       "libboost-json${Boost_VERSION_MAJOR}.${Boost_VERSION_MINOR}-dev, libcaf-dev (>= ${CAF_VERSION}), "
       "libcurl4-openssl-dev | libcurl-dev, libssl-dev, libsqlite3-dev, libpq-dev, libtomlplusplus-dev")

include(CPack)
