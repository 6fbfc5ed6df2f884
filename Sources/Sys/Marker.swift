public enum SysMarker {}
