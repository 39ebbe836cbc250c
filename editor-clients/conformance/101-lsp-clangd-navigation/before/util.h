#ifndef UTIL_H
#define UTIL_H

/* Adds two numbers. */
int add(int a, int b);

#endif
