#include <stdio.h>
int main(){puts("hi");return 0;}
