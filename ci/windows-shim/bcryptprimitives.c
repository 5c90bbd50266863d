/*
 * A one-function bcryptprimitives.dll for Wine 8, which lacks it.
 *
 * Rust's standard library (1.78 and later) imports ProcessPrng from
 * bcryptprimitives.dll on Windows, so under a Wine without that DLL every
 * Rust program fails to load (status c0000135). This stand-in gives the same
 * bytes Windows' own RtlGenRandom (advapi32!SystemFunction036) gives. It is
 * for running the test suite under Wine only: ci/windows builds it with
 * mingw into a private WINEPREFIX and nothing ships it.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    /* RtlGenRandom takes a ULONG length: feed it in chunks. */
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
