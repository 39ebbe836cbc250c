#include "util.h"

int main(void) {
    int total = add(1, 2);
    return add(total, 3);
}
