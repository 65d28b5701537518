# Writes the bytes of IN as a NUL-terminated char array NAME into OUT.
file(READ "${IN}" _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _arr "${_hex}")
file(WRITE "${OUT}" "namespace strata::analysis { extern const char ${NAME}[] = {${_arr} 0x00}; }\n")
