/* bcryptprimitives.c: the one function of bcryptprimitives.dll that Go
 * 1.22+ binaries need at startup (ProcessPrng, the runtime's random
 * source), which Wine 8.0 lacks; built with MinGW and copied into the Wine
 * prefix's system32, it lets the Windows build of gprof start under Wine.
 * It fills the buffer with RtlGenRandom (advapi32!SystemFunction036).
 *
 * Build: x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll \
 *          bcryptprimitives.c -ladvapi32
 */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!SystemFunction036(data, n)) return FALSE;
		data += n; len -= n;
	}
	return TRUE;
}
