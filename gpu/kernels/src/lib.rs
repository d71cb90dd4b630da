#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stdarch_nvptx)]

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_f32(x: *const f32, y: *mut f32, n: u32) {
    use core::arch::nvptx::*;
    let i = unsafe { _block_idx_x() * _block_dim_x() + _thread_idx_x() } as u32;
    if i < n {
        let v = unsafe { *x.add(i as usize) };
        let r: f32;
        unsafe { core::arch::asm!("ex2.approx.ftz.f32 {r}, {v};", r = out(reg32) r, v = in(reg32) v) };
        unsafe { *y.add(i as usize) = r };
    }
}
