public enum TestSupportMarker {}
