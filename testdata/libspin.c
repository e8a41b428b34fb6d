/* libspin.so: the 3:1 split inside a shared library (see libmain.c). */
__attribute__((noinline)) unsigned long lib_a(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * 7;
	return x;
}

__attribute__((noinline)) unsigned long lib_b(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * 7;
	return x;
}
