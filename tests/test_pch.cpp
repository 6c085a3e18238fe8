// Compiles tests/CMakeLists.txt's shared precompiled header; nothing else.
