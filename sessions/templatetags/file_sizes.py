"""File sizes in the binary units they are counted in: 1 KiB is 1,024 bytes, 1 MiB 1,048,576.

Django's `filesizeformat` divides by 1,024 and still writes "KB" and "MB"; a student comparing the page with `ls -lh`
(which writes K and M for the same binary units) or with a decimal MB would read a 4 % error into it at MiB and 7 % at
GiB. Every page that shows a file's size uses this filter instead.
"""

from django import template

register = template.Library()

UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


@register.filter
def binary_size(value) -> str:
    """ "512 bytes", "1 byte", "1.5 KiB", "20.0 MiB"; empty for a value that is not a number of bytes."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        return ""
    if size < 1024:
        whole = int(size)
        return "1 byte" if whole == 1 else f"{whole} bytes"
    for unit in UNITS:
        size /= 1024
        if size < 1024 or unit == UNITS[-1]:
            return f"{size:.1f} {unit}"
    return ""  # not reached: the last unit returns
