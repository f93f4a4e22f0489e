// gnu-efi headers plus the PI-spec protocols they lack. Only src/efi includes this.
#pragma once

extern "C" {
#include <efi.h>
}

// EFI_MP_SERVICES_PROTOCOL, UEFI PI spec Vol. 2 §13.4 (edk2 MdePkg/Include/Protocol/MpService.h).
#define PMULAB_MP_SERVICES_GUID                                                        \
    {                                                                                  \
        0x3fdda605, 0xa76e, 0x4f46, { 0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08 } \
    }

constexpr UINT32 kProcessorAsBspBit = 0x1;
constexpr UINT32 kProcessorEnabledBit = 0x2;
constexpr UINT32 kProcessorHealthStatusBit = 0x4;
constexpr UINTN kCpuV2ExtendedTopology = UINTN(1) << 24;

struct EfiCpuPhysicalLocation {
    UINT32 Package;
    UINT32 Core;
    UINT32 Thread;
};

struct EfiCpuPhysicalLocation2 {
    UINT32 Package;
    UINT32 Module;
    UINT32 Tile;
    UINT32 Die;
    UINT32 Core;
    UINT32 Thread;
};

struct EfiProcessorInformation {
    UINT64 ProcessorId;
    UINT32 StatusFlag;
    EfiCpuPhysicalLocation Location;
    EfiCpuPhysicalLocation2 Location2;  // EXTENDED_PROCESSOR_INFORMATION (PI 1.7+)
};

typedef VOID(EFIAPI* EfiApProcedure)(VOID* arg);

struct EfiMpServicesProtocol {
    EFI_STATUS(EFIAPI* GetNumberOfProcessors)(EfiMpServicesProtocol* This, UINTN* Number, UINTN* Enabled);
    EFI_STATUS(EFIAPI* GetProcessorInfo)(EfiMpServicesProtocol* This, UINTN Number, EfiProcessorInformation* Info);
    EFI_STATUS(EFIAPI* StartupAllAPs)
    (EfiMpServicesProtocol* This, EfiApProcedure Procedure, BOOLEAN SingleThread, EFI_EVENT WaitEvent, UINTN TimeoutUs,
     VOID* Arg, UINTN** FailedCpuList);
    EFI_STATUS(EFIAPI* StartupThisAP)
    (EfiMpServicesProtocol* This, EfiApProcedure Procedure, UINTN Number, EFI_EVENT WaitEvent, UINTN TimeoutUs,
     VOID* Arg, BOOLEAN* Finished);
    EFI_STATUS(EFIAPI* SwitchBSP)(EfiMpServicesProtocol* This, UINTN Number, BOOLEAN EnableOldBsp);
    EFI_STATUS(EFIAPI* EnableDisableAP)(EfiMpServicesProtocol* This, UINTN Number, BOOLEAN Enable, UINT32* Health);
    EFI_STATUS(EFIAPI* WhoAmI)(EfiMpServicesProtocol* This, UINTN* Number);
};

namespace pmulab::efi {

extern EFI_SYSTEM_TABLE* gST;
extern EFI_BOOT_SERVICES* gBS;
extern EFI_HANDLE gImage;

// "EFI_NOT_FOUND" etc.; the only place EFI_STATUS becomes text.
const char* status_name(EFI_STATUS s);

}  // namespace pmulab::efi
