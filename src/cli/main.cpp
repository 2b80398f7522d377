#include <cstdio>
int main() { std::puts("folio"); return 0; }
